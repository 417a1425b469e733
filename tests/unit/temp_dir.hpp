#pragma once
// A private temporary directory for the unit tests that read real files, removed afterwards.

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace dbcheck::testing {

struct TempDir {
  std::string path;
  // Creates /tmp/dbcheck-unit-XXXXXX (mode 0700).
  TempDir() {
    std::string tmpl = "/tmp/dbcheck-unit-XXXXXX";
    path = ::mkdtemp(tmpl.data());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Removes it and everything in it.
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  // Writes `content` to the file `name` in it with `mode`; returns the file's path.
  std::string write(const std::string& name, const std::string& content, mode_t mode) const {
    const std::string file = path + "/" + name;
    std::ofstream(file) << content;
    ::chmod(file.c_str(), mode);
    return file;
  }
};

} // namespace dbcheck::testing

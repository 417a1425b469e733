#pragma once
// The least-privilege setup dbcheck ships (docs/sql, docs/redis), compiled into the binary so
// `dbcheck setup-sql` prints exactly the files the tests load.

#include <optional>
#include <string_view>
#include <vector>

namespace dbcheck::extcheck {

// --- Interface ---

// One shipped setup file: the name `dbcheck setup-sql NAME` takes, its repository path, and
// its text.
struct SetupFile {
  std::string_view name;
  std::string_view source_path;
  std::string_view text;
};

// Every shipped setup file, in the order `dbcheck setup-sql --help` lists them.
const std::vector<SetupFile>& setup_files();

// The setup file called `name`, or nullopt.
std::optional<SetupFile> find_setup_file(std::string_view name);

} // namespace dbcheck::extcheck

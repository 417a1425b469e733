#pragma once
// Shell completion generated from the command-line definition itself (CLI11's App), so it
// cannot drift from the options dbcheck actually takes.

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

namespace dbcheck::extcheck {

// --- Interface ---

// A bash completion script for `app` (named app.get_name()): its subcommands, each one's
// long and short options, and for subcommands listed in `first_words` the words offered for
// their first positional argument. Options named in `file_options` complete file names.
std::string bash_completion(const CLI::App& app,
                            const std::map<std::string, std::vector<std::string>>& first_words,
                            const std::vector<std::string>& file_options);

} // namespace dbcheck::extcheck

#pragma once
// The JSON documents of desync's commands: the "options" object and writing a document to a file.
#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace desync::run {

/// The "options" object: every option's effective value under its key.
inline nlohmann::json options_json(const std::vector<std::pair<std::string, std::string>>& options) {
  nlohmann::json opts = nlohmann::json::object();
  for (const auto& [k, v] : options) opts[k] = v;
  return opts;
}

/// Writes a JSON document (indented by 2, a newline at the end); throws std::runtime_error if the
/// file cannot be written.
inline void write_json_file(const nlohmann::json& j, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write JSON output '" + path + "'");
  out << j.dump(2) << "\n";
  if (!out) throw std::runtime_error("error writing JSON output '" + path + "'");
}

}  // namespace desync::run

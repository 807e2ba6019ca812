#pragma once
// The JSON documents of desync's commands: the "options" object and writing a document to a file.
#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace desync::run {

/// The "options" object: every option's effective value under its key (Json: nlohmann::json, or
/// nlohmann::ordered_json to keep the order of a document that lists its keys in order).
template <class Json = nlohmann::json>
Json options_json(const std::vector<std::pair<std::string, std::string>>& options) {
  Json opts = Json::object();
  for (const auto& [k, v] : options) opts[k] = v;
  return opts;
}

/// Writes a JSON document (indented by 2, a newline at the end); throws std::runtime_error if the
/// file cannot be written.
template <class Json>
void write_json_file(const Json& j, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write JSON output '" + path + "'");
  out << j.dump(2) << "\n";
  if (!out) throw std::runtime_error("error writing JSON output '" + path + "'");
}

}  // namespace desync::run

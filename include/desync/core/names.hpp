#pragma once
// The names of an enumeration's values, listed once beside the enum, and what is made from that
// list: the name of a value, parsing a command-line spelling, the "a, b or c" of an error message
// and the "a | b | c" help text with a line per value.
//
//   enum class Transport { p2p, rma, shmem };
//   inline constexpr core::Named<Transport> transport_names[] = {
//       {Transport::p2p, "p2p", "MPI two-sided"}, {Transport::rma, "rma", "MPI one-sided"}, ...};
//   auto t = core::parse_named(transport_names, "rma", "--transport", "transport");
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>

#include <type_traits>
#include <utility>
#include <vector>

#include "desync/core/error.hpp"

namespace desync::core {

/// One value of an enumeration with its command-line spelling and a one-line description.
template <class E>
struct Named {
  E value;
  const char* name;
  const char* description = "";
};

/// The spelling of `value` in `names` ("?" if it has none).
template <class Names, class E>
constexpr const char* name_of(const Names& names, E value) {
  for (const auto& n : names)
    if (n.value == value) return n.name;
  return "?";
}

/// "a, b or c": the spellings, for an error message.
template <class Names>
std::string name_list(const Names& names) {
  std::string out;
  const auto count = std::size(names);
  std::size_t i = 0;
  for (const auto& n : names) {
    if (i > 0) out += i + 1 == count ? " or " : ", ";
    out += n.name;
    ++i;
  }
  return out;
}

/// The value spelled `text`; InputError "<option> '<text>': unknown <what> (expected a, b or c)"
/// for anything else.
template <class Names>
auto parse_named(const Names& names, std::string_view text, std::string_view option, std::string_view what) {
  for (const auto& n : names)
    if (text == n.name) return n.value;
  throw InputError(std::string(option) + " '" + std::string(text) + "': unknown " + std::string(what) +
                   " (expected " + name_list(names) + ")");
}

/// The entries of `names` whose values are in `allowed`, in allowed's order: for an option whose
/// vocabulary every command shares, each command taking the part of it that applies (--reduction).
template <class Names, class E>
std::vector<std::decay_t<decltype(*std::begin(std::declval<const Names&>()))>> among(const Names& names,
                                                                                      std::initializer_list<E> allowed) {
  std::vector<std::decay_t<decltype(*std::begin(names))>> out;
  for (E value : allowed)
    for (const auto& n : names)
      if (n.value == value) out.push_back(n);
  return out;
}

/// parse_named over among(names, allowed): a spelling of the vocabulary that this command does not
/// take is refused as "<option> '<text>': not taken here (expected a, b or c)".
template <class Names, class E>
E parse_named_among(const Names& names, std::initializer_list<E> allowed, std::string_view text,
                    std::string_view option, std::string_view what) {
  const auto part = among(names, allowed);
  for (const auto& n : part)
    if (text == n.name) return n.value;
  for (const auto& n : names)
    if (text == n.name)
      throw InputError(std::string(option) + " '" + std::string(text) + "': not taken here (expected " +
                       name_list(part) + ")");
  return parse_named(part, text, option, what);
}

/// "a | b | c", then, when the values have descriptions, a line "  a: description" for each.
template <class Names>
std::string named_help(const Names& names) {
  std::string spellings, lines;
  for (const auto& n : names) {
    spellings += (spellings.empty() ? "" : " | ") + std::string(n.name);
    if (!std::string_view(n.description).empty()) lines += "\n  " + std::string(n.name) + ": " + std::string(n.description);
  }
  return spellings + lines;
}

}  // namespace desync::core

#include "desync/communication/exchange_engine.hpp"

#include "desync/core/error.hpp"

namespace desync::comm {

const char* to_string(ExchangeEngine e) {
  switch (e) {
    case ExchangeEngine::p2p: return "p2p";
    case ExchangeEngine::neighbor: return "neighbor";
    case ExchangeEngine::blocking: return "blocking";
  }
  return "?";
}

const char* to_string(Progress p) {
  switch (p) {
    case Progress::none: return "none";
    case Progress::test: return "test";
    case Progress::thread: return "thread";
  }
  return "?";
}

ExchangeEngine parse_exchange_engine(const std::string& text) {
  for (auto e : {ExchangeEngine::p2p, ExchangeEngine::neighbor, ExchangeEngine::blocking})
    if (text == to_string(e)) return e;
  throw InputError("unknown exchange engine '" + text + "' (expected p2p, neighbor or blocking)");
}

Progress parse_progress(const std::string& text) {
  for (auto p : {Progress::none, Progress::test, Progress::thread})
    if (text == to_string(p)) return p;
  throw InputError("unknown progress mode '" + text + "' (expected none, test or thread)");
}

}  // namespace desync::comm

#pragma once
// How a synchronous halo (ghost) exchange moves data, and how it is pushed forward while the caller
// computes the rows that need no halo value (Hoefler et al., 2007, Listings 3-5).
#include <string>

#include "desync/core/names.hpp"

namespace desync::comm {

/// How ghost values travel during a split-phase exchange.
enum class ExchangeEngine {
  p2p,       ///< MPI_Isend / MPI_Irecv, overlapped with the interior rows
  neighbor,  ///< MPI_Ineighbor_alltoallv on a topology communicator, overlapped
  blocking,  ///< exchange completed before any row is computed (reference, no overlap)
};
/// How the exchange is pushed forward while the interior rows are computed.
enum class Progress {
  none,    ///< rely on the MPI library (no calls between start and wait)
  test,    ///< MPI_Test every `test_interval` interior rows
  thread,  ///< a progress thread calls MPI_Test while the interior is computed (MPI_THREAD_MULTIPLE)
};
inline constexpr core::Named<ExchangeEngine> exchange_engine_names[] = {
    {ExchangeEngine::p2p, "p2p", "a channel per neighbour (over --transport), overlapped with the interior rows"},
    {ExchangeEngine::neighbor, "neighbor", "MPI_Ineighbor_alltoallv on a topology communicator, overlapped"},
    {ExchangeEngine::blocking, "blocking", "completed before any row is computed (the reference, no overlap)"}};
inline constexpr core::Named<Progress> progress_names[] = {
    {Progress::none, "none", "no MPI calls between start and wait: the library's own progress"},
    {Progress::test, "test",
     "MPI_Test every --test-interval rows (the polls also advance a --reduction doubling in flight, there and in the "
     "preconditioner)"},
    {Progress::thread, "thread", "a progress thread calls MPI_Test while the interior is computed (MPI_THREAD_MULTIPLE)"}};
inline const char* to_string(ExchangeEngine e) { return core::name_of(exchange_engine_names, e); }
inline const char* to_string(Progress p) { return core::name_of(progress_names, p); }
/// The command-line spellings; desync::InputError naming `option` and the choices otherwise.
inline ExchangeEngine parse_exchange_engine(const std::string& text, const std::string& option = "--engine") {
  return core::parse_named(exchange_engine_names, text, option, "engine");
}
inline Progress parse_progress(const std::string& text, const std::string& option = "--progress") {
  return core::parse_named(progress_names, text, option, "progress mode");
}

}  // namespace desync::comm

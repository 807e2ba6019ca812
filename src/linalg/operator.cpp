#include "desync/linalg/operator.hpp"

#include "desync/core/error.hpp"

namespace desync::linalg {

int required_thread_level(const SpmvConfig& cfg) {
  return cfg.progress == Progress::thread && cfg.engine != ExchangeEngine::blocking ? MPI_THREAD_MULTIPLE
                                                                                     : MPI_THREAD_FUNNELED;
}

}  // namespace desync::linalg

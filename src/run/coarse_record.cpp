// The coarse level's part of a run's record; see coarse_record.hpp.
#include "coarse_record.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace desync::run::detail {

RankFields& coarse_level_fields(RankFields& f, const solvers::CoarseSummary& c) {
  return f.number("coarse_setup_seconds", c.setup_seconds);
}

RankFields& coarse_iteration_fields(RankFields& f, const solvers::SchwarzResult::CoarseCounts& c) {
  return f.integer("coarse_corrections", c.corrections)
      .integer("coarse_solves", c.solves)
      .integer("coarse_contributions", c.contributions)
      .integer("coarse_held", c.held)
      .number("coarse_seconds", c.seconds)
      .number("coarse_delay_mean", c.delay.mean())
      .integer("coarse_delay_max", c.delay.max);
}

void record_coarse_level(RunRecord& r, nlohmann::json& details, const solvers::CoarseSummary& c,
                         const std::string& near_kernel) {
  if (c.functions == 0) {
    details["coarse"] = "none";
    return;
  }
  double setup = 0;
  for (const auto& p : r.per_rank) setup = std::max(setup, p.value("coarse_setup_seconds"));
  r.setup_lines.push_back({"coarse level", fmt::format("{}; set-up {:.4f} s (slowest rank)", c.description, setup)});
  details["coarse"] = c.kind;
  details["coarse_functions"] = c.functions;
  details["coarse_nonzeros"] = c.nonzeros;
  details["coarse_factor_nonzeros"] = c.factor_nonzeros;
  details["coarse_solver"] = c.solver;
  details["coarse_ranks"] = c.ranks;
  details["coarse_setup_seconds"] = setup;
  details["near_kernel"] = near_kernel;
  details["near_kernel_vectors"] = c.near_kernel_vectors;
}

void record_coarse_iterations(RunRecord& r, nlohmann::json& details, const CoarseIterationSettings& s) {
  double seconds = 0, delay_sum = 0;
  long corrections = 0, solves = 0, held = 0, delay_max = 0;
  for (const auto& p : r.per_rank) {
    seconds = std::max(seconds, p.value("coarse_seconds"));
    const auto n = static_cast<long>(p.value("coarse_corrections"));
    corrections += n;
    delay_sum += p.value("coarse_delay_mean") * static_cast<double>(n);
    delay_max = std::max(delay_max, static_cast<long>(p.value("coarse_delay_max")));
    solves = std::max(solves, static_cast<long>(p.value("coarse_solves")));
    held += static_cast<long>(p.value("coarse_held"));
  }
  const double delay_mean = corrections > 0 ? delay_sum / static_cast<double>(corrections) : 0.0;
  r.performance_lines.push_back(
      {"coarse", s.asynchronous
                     ? fmt::format("{} coarse solves on rank 0, {} corrections applied (all ranks, {} form), delay mean {:.2f} "
                                   "max {} iterations, {} passes held (--coarse-reuse {}), tree fan-in {}{} height {}, "
                                   "{:.4f} s (slowest rank)",
                                   solves, corrections, s.form, delay_mean, delay_max, held, s.reuse, s.fan_in,
                                   s.fan_in_auto ? fmt::format(" (auto: latency {:.3g} s, {:.3g} s per message, "
                                                               "poll wait {:.3g} s)",
                                                               s.fan_in_model.latency, s.fan_in_model.per_message,
                                                               s.fan_in_model.poll_wait)
                                                 : std::string(),
                                   s.tree_height, seconds)
                     : fmt::format("{} coarse corrections ({} form), {:.4f} s (slowest rank)", solves, s.form,
                                   seconds)});
  details["coarse_form"] = s.form;
  details["coarse_seconds"] = seconds;
  details["coarse_solves"] = solves;
  details["coarse_corrections"] = corrections;
  details["coarse_delay"] = {{"mean", delay_mean}, {"max", delay_max}};
  details["coarse_held"] = held;
  details["coarse_reuse"] = s.reuse;
  if (s.asynchronous) {
    details["coarse_fan_in"] = s.fan_in;
    details["coarse_fan_in_model"] =
        s.fan_in_auto ? nlohmann::json{{"latency", s.fan_in_model.latency},
                                       {"per_message", s.fan_in_model.per_message},
                                       {"poll_wait", s.fan_in_model.poll_wait}}
                      : nlohmann::json(nullptr);
    details["coarse_tree_height"] = s.tree_height;
  }
}

}  // namespace desync::run::detail

// Command-line options of the mini-apps, one dialect for all: GNU long options parsed by CLI11,
// `--help` on every app, and the options every app shares spelled and meant the same way.
#pragma once

#include <string>

#include <CLI/CLI.hpp>
#include <boost/mpi/communicator.hpp>

namespace example_app {

/// Parses `argv` on every rank (every rank sees the same arguments, so all agree without a
/// message). Returns -1 to run, else the exit code: 0 after `--help`, 2 after a bad option;
/// rank 0 prints the help or the error.
inline int parse(const boost::mpi::communicator& world, CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::ParseError& e) {
    if (world.rank() == 0) app.exit(e);
    return e.get_exit_code() == 0 ? 0 : 2;
  }
}

/// `--progress N`: rank 0 prints a progress line every N steps (0: never), in every app.
inline void add_progress(CLI::App& app, int& every) {
  app.add_option("--progress", every, "rank 0 prints a progress line every N steps (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

/// `--device`: `what` (by default the fields) in GPU memory (CUDA builds), one GPU per rank of
/// a node.
inline void add_device(CLI::App& app, bool& device, const std::string& what = "fields") {
  app.add_flag("--device", device,
               what +
                   " in GPU memory (CUDA builds; one GPU per rank of a node, round robin; exits "
                   "77 where a rank has no GPU, 2 in a build without CUDA)");
}

}  // namespace example_app

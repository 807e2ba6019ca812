// desync._core: the Python bindings' one C++ file. A thin layer over run::invoke (invoke.hpp): the
// arrays of a SciPy or PETSc matrix are copied into a SuppliedSystem, the GIL is released while the
// command runs on the caller's communicator, and the record, exit code and solution come back.
// Everything else (option names, checks, messages, the run record) is the command line's own code.
#include <mpi.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "desync/communication/channel.hpp"
#include "desync/core/error.hpp"
#include "desync/run/invoke.hpp"
#include "desync/run/record.hpp"

namespace nb = nanobind;
using namespace desync;

namespace {

template <class T>
using Array = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

template <class T>
std::vector<T> to_vector(const Array<T>& a) {
  return std::vector<T>(a.data(), a.data() + a.shape(0));
}

/// A vector handed to Python as a NumPy array that owns it.
template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> to_numpy(std::vector<T>&& v) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T, nb::ndim<1>>(owned->data(), {owned->size()}, owner);
}

MPI_Comm comm_from_fortran(std::int64_t handle) { return MPI_Comm_f2c(static_cast<MPI_Fint>(handle)); }

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "desync's C++ library: run::invoke and the registry's options (use the desync package, not this module)";
  // Bad input (an option, a value, a system): the command line's message, on every rank.
  nb::exception<InputError>(m, "InputError", PyExc_ValueError);

  m.def("mpi_library_version", &run::mpi_library_version,
        "The MPI library this module is linked against (MPI_Get_library_version's first line)");

  m.def(
      "invoke",
      [](std::int64_t comm_handle, const std::vector<std::string>& args, bool with_system, bool on_root, bool has_matrix,
         std::int64_t rows, std::int64_t cols, const Array<std::int64_t>& indptr, const Array<std::int64_t>& indices,
         const Array<double>& data, bool has_rhs, const Array<double>& b, const std::string& partition,
         const Array<std::int32_t>& parts, const std::string& description, int near_kernel_vectors,
         const Array<double>& near_kernel) {
        std::shared_ptr<run::SuppliedSystem> system;
        if (with_system) {  // copied while the GIL is held: the caller's arrays may change after
          system = std::make_shared<run::SuppliedSystem>();
          system->on_root = on_root;
          system->has_matrix = has_matrix;
          system->rows = rows;
          system->cols = cols;
          system->row_ptr = to_vector(indptr);
          system->col = to_vector(indices);
          system->val = to_vector(data);
          system->has_rhs = has_rhs;
          system->b = to_vector(b);
          system->partition = partition;
          system->parts.assign(parts.data(), parts.data() + parts.shape(0));
          system->description = description;
          system->near_kernel_vectors = near_kernel_vectors;
          system->near_kernel = to_vector(near_kernel);
        }
        const MPI_Comm comm = comm_from_fortran(comm_handle);
        run::InvokeResult r;
        {
          nb::gil_scoped_release unlocked;  // other Python threads run during the solve
          r = run::invoke(comm, args, std::move(system));
        }
        return std::make_tuple(r.exit_code, std::move(r.record_json), r.has_solution, to_numpy(std::move(r.x)),
                               to_numpy(std::move(r.rows)));
      },
      nb::arg("comm"), nb::arg("args"), nb::arg("with_system"), nb::arg("on_root"), nb::arg("has_matrix"),
      nb::arg("rows"), nb::arg("cols"), nb::arg("indptr"), nb::arg("indices"), nb::arg("data"), nb::arg("has_rhs"),
      nb::arg("b"), nb::arg("partition"), nb::arg("parts"), nb::arg("description"), nb::arg("near_kernel_vectors"),
      nb::arg("near_kernel"),
      "Runs `desync <args>` on the communicator with Fortran handle `comm` (mpi4py: comm.py2f()). Returns "
      "(exit_code, record_json, has_solution, x, rows).");

  m.def("finalize_transports", &comm::finalize_transports,
        "shmem_finalize if a run started OpenSHMEM (desync registers it with atexit, before mpi4py's MPI_Finalize)");
  m.def("command_help", &run::command_help, nb::arg("solver"), "`desync <solver> --help`'s text");
  m.def("options_json", &run::options_json, "Every registered solver's options as JSON");
}

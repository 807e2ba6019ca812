#pragma once
// Writing the global solution field, collectively with MPI-IO: every rank writes its own block.
//
//   .npy  NumPy format 1.0, float64 little-endian, shape (nz, ny, nx): C order, z slowest.
//   .vti  VTK XML ImageData with one raw appended Float64 point array "u" (opens in ParaView);
//         grid point (i, j, k) sits at ((i+1) hx, (j+1) hy, (k+1) hz) with h = 1 / (n + 1).
#include <string>

#include "desync/decomposition/cart_grid.hpp"
#include "desync/decomposition/field.hpp"

namespace desync::run {

enum class FieldFormat { npy, vti };
/// Format from the file name's extension; throws InputError for anything but .npy and .vti.
FieldFormat field_format_for(const std::string& path);

/// Open MPI before 5.0.6 can corrupt collective writes with holes (its ompio layer's data sieving
/// does an unlocked read-modify-write). Call before MPI_Init: it sets
/// OMPI_MCA_fbtl_posix_write_datasieving=0 unless the environment already sets it. The desync
/// executable does this.
void prepare_mpi_io_environment();

/// Writes the interior of `u` as the global array. Collective over the grid: one
/// MPI_File_write_all through a subarray view; on an Open MPI older than 5.0.6 whose data sieving
/// is still enabled (see prepare_mpi_io_environment), each rank writes its x-rows with
/// MPI_File_write_at instead, which that bug cannot corrupt.
/// Throws std::runtime_error on every rank if the file cannot be opened or written.
void save_field(const decomposition::CartGrid& grid, const decomposition::Field& u, const std::string& path);

/// Rank 0 checks that `path` can be created or overwritten; collective, throws InputError on every
/// rank otherwise. `what` names the option in the message.
void check_writable(MPI_Comm comm, const std::string& path, const std::string& what);

}  // namespace desync::run

#include "desync/run/field_io.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "desync/core/error.hpp"

namespace desync::run {

void prepare_mpi_io_environment() { setenv("OMPI_MCA_fbtl_posix_write_datasieving", "0", /*overwrite=*/0); }

namespace {
// True on an Open MPI older than 5.0.6 whose ompio data sieving is on (the default there).
bool collective_write_unsafe() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  int major = 0, minor = 0, patch = 0;
  if (std::sscanf(version, "Open MPI v%d.%d.%d", &major, &minor, &patch) < 2) return false;
  const bool fixed = major > 5 || (major == 5 && (minor > 0 || patch >= 6));
  const char* sieving = std::getenv("OMPI_MCA_fbtl_posix_write_datasieving");
  return !fixed && !(sieving && std::string(sieving) == "0");
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string npy_header(const decomposition::Index3& g) {
  std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::to_string(g[2]) + ", " +
                     std::to_string(g[1]) + ", " + std::to_string(g[0]) + "), }";
  // magic (6) + version (2) + header length (2) + dict + padding + '\n', total a multiple of 64.
  std::size_t total = 10 + dict.size() + 1;
  std::size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::string h = "\x93NUMPY";
  h += static_cast<char>(1);
  h += static_cast<char>(0);
  const auto len = static_cast<std::uint16_t>(dict.size());
  h += static_cast<char>(len & 0xff);
  h += static_cast<char>(len >> 8);
  return h + dict;
}

std::string vti_header(const decomposition::Index3& g) {
  double h[3];
  for (int a = 0; a < 3; ++a) h[a] = 1.0 / (g[a] + 1);
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "<?xml version=\"1.0\"?>\n"
                "<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n"
                "  <ImageData WholeExtent=\"0 %d 0 %d 0 %d\" Origin=\"%.17g %.17g %.17g\" Spacing=\"%.17g %.17g %.17g\">\n"
                "    <Piece Extent=\"0 %d 0 %d 0 %d\">\n"
                "      <PointData Scalars=\"u\">\n"
                "        <DataArray type=\"Float64\" Name=\"u\" format=\"appended\" offset=\"0\"/>\n"
                "      </PointData>\n"
                "    </Piece>\n"
                "  </ImageData>\n"
                "  <AppendedData encoding=\"raw\">\n   _",
                g[0] - 1, g[1] - 1, g[2] - 1, h[0], h[1], h[2], h[0], h[1], h[2], g[0] - 1, g[1] - 1, g[2] - 1);
  return buf;
}
}  // namespace

FieldFormat field_format_for(const std::string& path) {
  if (ends_with(path, ".npy")) return FieldFormat::npy;
  if (ends_with(path, ".vti")) return FieldFormat::vti;
  throw InputError("--save '" + path + "': unknown format, use a .npy or .vti file name");
}

void check_writable(MPI_Comm comm, const std::string& path, const std::string& what) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string problem;
  if (rank == 0) {
    namespace fs = std::filesystem;
    const fs::path p(path);
    const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
    std::error_code ec;
    if (path.empty())
      problem = what + ": empty file name";
    else if (fs::is_directory(p, ec))
      problem = what + " '" + path + "': is a directory";
    else if (!fs::is_directory(dir, ec))
      problem = what + " '" + path + "': directory '" + dir.string() + "' does not exist";
    else if (fs::exists(p, ec) ? access(path.c_str(), W_OK) != 0 : access(dir.c_str(), W_OK) != 0)
      problem = what + " '" + path + "': not writable";
  }
  agree_or_throw(comm, problem.empty(), problem);
}

void save_field(const decomposition::CartGrid& grid, const decomposition::Field& u, const std::string& path) {
  const FieldFormat format = field_format_for(path);
  const auto& g = grid.global();
  const auto& n = grid.local();
  const auto& o = grid.offset();
  const std::string header = format == FieldFormat::npy ? npy_header(g) : vti_header(g);
  const std::uint64_t data_bytes = static_cast<std::uint64_t>(grid.global_cells()) * sizeof(double);
  const MPI_Offset data_start =
      static_cast<MPI_Offset>(header.size() + (format == FieldFormat::vti ? sizeof(std::uint64_t) : 0));

  MPI_File file;
  int rc = MPI_File_open(grid.comm(), path.c_str(), MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &file);
  int ok = rc == MPI_SUCCESS ? 1 : 0, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, grid.comm());
  if (!all_ok) {
    if (ok) MPI_File_close(&file);
    throw std::runtime_error("cannot open '" + path + "' for writing");
  }
  MPI_File_set_size(file, 0);
  if (grid.rank() == 0) {
    MPI_File_write_at(file, 0, header.data(), static_cast<int>(header.size()), MPI_CHAR, MPI_STATUS_IGNORE);
    if (format == FieldFormat::vti) {
      MPI_File_write_at(file, static_cast<MPI_Offset>(header.size()), &data_bytes, 8, MPI_BYTE, MPI_STATUS_IGNORE);
      const std::string footer = "\n  </AppendedData>\n</VTKFile>\n";
      MPI_File_write_at(file, data_start + static_cast<MPI_Offset>(data_bytes), footer.data(),
                        static_cast<int>(footer.size()), MPI_CHAR, MPI_STATUS_IGNORE);
    }
  }
  // File view: this rank's block of the (nz, ny, nx) array; memory: the interior of the halo'd block.
  int gsize[3] = {g[2], g[1], g[0]}, lsize[3] = {n[2], n[1], n[0]}, start[3] = {o[2], o[1], o[0]};
  MPI_Datatype filetype, memtype;
  MPI_Type_create_subarray(3, gsize, lsize, start, MPI_ORDER_C, MPI_DOUBLE, &filetype);
  MPI_Type_commit(&filetype);
  int msize[3] = {n[2] + 2, n[1] + 2, n[0] + 2}, mstart[3] = {1, 1, 1};
  MPI_Type_create_subarray(3, msize, lsize, mstart, MPI_ORDER_C, MPI_DOUBLE, &memtype);
  MPI_Type_commit(&memtype);
  if (collective_write_unsafe()) {
    rc = MPI_SUCCESS;
    for (int k = 0; k < n[2] && rc == MPI_SUCCESS; ++k)
      for (int j = 0; j < n[1] && rc == MPI_SUCCESS; ++j) {
        const MPI_Offset at = data_start + static_cast<MPI_Offset>(sizeof(double)) *
                                               grid.global_index(0, j, k);
        rc = MPI_File_write_at(file, at, u.data() + u.index(0, j, k), n[0], MPI_DOUBLE, MPI_STATUS_IGNORE);
      }
  } else {
    MPI_File_set_view(file, data_start, MPI_DOUBLE, filetype, "native", MPI_INFO_NULL);
    rc = MPI_File_write_all(file, u.data(), 1, memtype, MPI_STATUS_IGNORE);
  }
  MPI_Type_free(&filetype);
  MPI_Type_free(&memtype);
  MPI_File_close(&file);
  ok = rc == MPI_SUCCESS ? 1 : 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, grid.comm());
  if (!all_ok) throw std::runtime_error("error writing '" + path + "'");
}

}  // namespace desync::run

# Writes share/mpi.json: the MPI family this build was compiled against ("openmpi", "mpich"
# or "unknown"), its version as mpi.h states it, the compiler wrapper and that MPI's launcher.
# FindMPI's MPIEXEC_EXECUTABLE is the first mpiexec on PATH, which with two MPIs installed
# side by side (Debian's openmpi-bin and mpich) may belong to the other one; the launcher is
# therefore looked up next to the compiler wrapper under the names that MPI installs.
set(FB_MPI_FLAVOUR unknown)
set(FB_MPI_LIBRARY "")
set(FB_MPIEXEC_NAMES mpiexec mpirun)
find_file(FB_MPI_H mpi.h HINTS ${MPI_C_HEADER_DIR} ${MPI_C_INCLUDE_DIRS} NO_DEFAULT_PATH)
if(FB_MPI_H)
  file(STRINGS "${FB_MPI_H}" FB_MPI_DEFINES REGEX "^#define[ \t]+(MPICH_VERSION|OMPI_(MAJOR|MINOR|RELEASE)_VERSION)[ \t]")
  if(FB_MPI_DEFINES MATCHES "OMPI_MAJOR_VERSION[ \t]+([0-9]+)")
    set(FB_MPI_FLAVOUR openmpi)
    set(FB_MPI_LIBRARY "Open MPI ${CMAKE_MATCH_1}")
    foreach(part MINOR RELEASE)
      if(FB_MPI_DEFINES MATCHES "OMPI_${part}_VERSION[ \t]+([0-9]+)")
        string(APPEND FB_MPI_LIBRARY ".${CMAKE_MATCH_1}")
      endif()
    endforeach()
    set(FB_MPIEXEC_NAMES mpirun.openmpi mpiexec.openmpi mpirun mpiexec)
  elseif(FB_MPI_DEFINES MATCHES "MPICH_VERSION[ \t]+\"([^\"]*)\"")
    # MVAPICH, Intel MPI and Cray MPICH define it too: the MPICH family, launched by hydra.
    set(FB_MPI_FLAVOUR mpich)
    set(FB_MPI_LIBRARY "MPICH ${CMAKE_MATCH_1}")
    set(FB_MPIEXEC_NAMES mpiexec.hydra mpiexec.mpich mpirun.mpich mpiexec mpirun)
  endif()
endif()
unset(FB_MPI_H CACHE)
# MPICH's MPI_STATUSES_IGNORE is (MPI_Status *)1, which GCC 11+ takes for an array of size 0
# passed to MPI_Waitall/MPI_Testall: a false alarm on every such call, not a defect.
if(FB_MPI_FLAVOUR STREQUAL "mpich" AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
  add_compile_options(-Wno-stringop-overflow)
endif()
get_filename_component(FB_MPICC_DIR "${MPI_C_COMPILER}" DIRECTORY)
unset(FB_MPIEXEC CACHE)
find_program(FB_MPIEXEC NAMES ${FB_MPIEXEC_NAMES} HINTS "${FB_MPICC_DIR}" NO_DEFAULT_PATH)
if(NOT FB_MPIEXEC)
  set(FB_MPIEXEC "")
endif()
message(STATUS "fabricbench: building for ${FB_MPI_FLAVOUR} (${FB_MPI_LIBRARY}), launcher ${FB_MPIEXEC}")
file(WRITE ${CMAKE_BINARY_DIR}/mpi.json
  "{\"flavour\": \"${FB_MPI_FLAVOUR}\", \"library\": \"${FB_MPI_LIBRARY}\", "
  "\"mpicc\": \"${MPI_C_COMPILER}\", \"mpiexec\": \"${FB_MPIEXEC}\"}\n")
install(FILES ${CMAKE_BINARY_DIR}/mpi.json DESTINATION ${FB_NATIVE_DEST}/share)

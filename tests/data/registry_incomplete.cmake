# For check_registry.py's own test (registry_incomplete_refused): CLI tests for the jacobi solver
# only, so every other solver and every CG method lacks one and the check must fail.
desync_cli_test(jacobi_only RANKS 1 CODE 0 REGEX "result" ARGS jacobi --local 8)

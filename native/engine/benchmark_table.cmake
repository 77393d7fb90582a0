# Writes the engine's benchmark table: `ENGINE list --format jsonl` into OUTPUT. Run by
# the build (cmake -P), so that the installed table is always the one of the installed engine.
execute_process(
  COMMAND "${ENGINE}" list --format jsonl
  OUTPUT_FILE "${OUTPUT}.tmp"
  RESULT_VARIABLE status
  ERROR_VARIABLE errors)
if(NOT status EQUAL 0)
  file(REMOVE "${OUTPUT}.tmp")
  message(FATAL_ERROR "`${ENGINE} list` failed (${status}): ${errors}")
endif()
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")

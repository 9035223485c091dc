# cli-docs: docs/cli.md = `ncclbpf help --markdown`.
execute_process(COMMAND "${CLI}" help --markdown OUTPUT_FILE "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ncclbpf help --markdown failed (${rc})")
endif()

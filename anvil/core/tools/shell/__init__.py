"""The shell tools (run_command, command_output, kill_command, run_tests) and the processes behind them.
"""

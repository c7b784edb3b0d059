#!/usr/bin/env bash
# stop hook: tell the person that anvil finished a turn and waits for them.
# Uses a desktop notification where one is available (notify-send on Linux, osascript on macOS), else rings
# the terminal bell on the controlling terminal. Always exits 0: a notification must never keep a turn going.

project=$(basename "${ANVIL_PROJECT_DIR:-$PWD}")
message="anvil finished a turn in ${project}"

if command -v notify-send >/dev/null 2>&1 && [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    notify-send --app-name=anvil "anvil" "$message" >/dev/null 2>&1 && exit 0
fi
if command -v osascript >/dev/null 2>&1; then
    osascript -e "display notification \"${message}\" with title \"anvil\"" >/dev/null 2>&1 && exit 0
fi
# stdout belongs to anvil; the bell has to go to the terminal itself
{ printf '\a' > /dev/tty; } 2>/dev/null
exit 0

# as_root COMMAND...: runs a command as root: directly when already root, else through sudo (which
# may ask for a password). Returns 127 when neither is possible. Source this file.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    return 127
  fi
}

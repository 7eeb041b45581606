#!/usr/bin/env bash
# Executable with a shebang: the shebang wins over the .py extension.
echo '{"runtime": "bash-shebang"}'

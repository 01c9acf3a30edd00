#!/bin/sh
# Rebuilds syscalls.o from syscalls.c. Needs clang and the libbpf headers
# (Debian: apt-get install clang libbpf-dev). The object is committed: cargo never runs this.
set -eu
cd "$(dirname "$0")"
clang -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c syscalls.c -o syscalls.o

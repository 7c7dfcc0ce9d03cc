#!/usr/bin/env bash
# Note [Per-ISA variants] made checkable: no symbol an ISA file may emit as a
# weak (COMDAT) definition is also defined outside that ISA's objects. If one
# were, the linker would keep one copy for every caller, possibly the AVX-512
# one for the baseline code on a CPU without AVX-512.
#
# Usage: check_isa_symbols.sh "<library objects;...>" "<isa objects;...>" ["<isa objects;...>" ...]
# (CMake passes each object library's $<TARGET_OBJECTS:...> list.)
set -euo pipefail
NM=${NM:-nm}
split() { tr ';' '\n' <<<"$1" | sed '/^$/d'; }
defined() { "$NM" --defined-only "$@" | awk 'NF == 3 { print $3 }' | sort -u; }
# Weak code only (W): weak or unique data (V, u: inline constexpr tables, static locals) holds the same
# bytes whichever copy the linker keeps; a function compiled for AVX-512 does not.
weak() { "$NM" --defined-only "$@" | awk 'NF == 3 && $2 == "W" { print $3 }' | sort -u; }
# The personality-routine reference every C++ object carries is data, not code.
harmless='^DW\.ref\.__gxx_personality_v0$'

isa_sets=("${@:2}")
# The library's own objects (its object list may include the ISA objects too).
mapfile -t others < <(split "$1" | grep -vxF -f <(for set in "${isa_sets[@]}"; do split "$set"; done))
status=0
for i in "${!isa_sets[@]}"; do
  mapfile -t mine < <(split "${isa_sets[$i]}")
  rest=("${others[@]}")
  for j in "${!isa_sets[@]}"; do
    [ "$i" = "$j" ] || mapfile -t -O "${#rest[@]}" rest < <(split "${isa_sets[$j]}")
  done
  shared=$(comm -12 <(weak "${mine[@]}") <(defined "${rest[@]}") | grep -Ev "$harmless" || true)
  if [ -n "$shared" ]; then
    label=$(grep -o '[^/]*\.dir' <<<"${mine[0]}" | head -1)
    echo "check_isa_symbols: defined both by ${label:-${mine[0]}} and outside it:" >&2
    echo "$shared" | c++filt | sed 's/^/  /' >&2
    status=1
  fi
done
[ $status -eq 0 ] && echo "check_isa_symbols: no symbol shared across ISA objects"
exit $status

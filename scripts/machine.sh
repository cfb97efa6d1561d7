# Sourced by scripts/bench-sitting and scripts/dev-profile-bench: the lines that say what a
# set of figures ran on, the same in both.

# The commit, and whether the working tree differed from it.
commit_line() {
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
}

# Which processor the hypervisor gave this machine: hosts of one name ("AMD EPYC") differ by
# generation, and an older one computes two to three times slower for hours, which the
# figures alone cannot tell from a slow spell (issue 9's seventy-eighth stop's sittings).
cpu_line() {
  echo "cpu: $(awk -F': ' '
    /^model name/ && !name { name = $2 }
    /^cpu family/ && !family { family = $2 }
    /^model[ \t]*:/ && !model { model = $2 }
    /^cpu MHz/ && !mhz { mhz = $2 }
    /^cache size/ && !cache { cache = $2 }
    END { printf "%s, family %s model %s, %.0f MHz, cache %s", name, family, model, mhz, cache }
  ' /proc/cpuinfo)"
}

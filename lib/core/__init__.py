"""Stage 0, used by every other stage: paths, profiles, atomic writes, device policy, plotting style."""

"""``robot-rl`` subcommands that compose several packages (demo recording, success/fail labelling, classifier
training). They sit above ``training``, ``teleop`` and ``rewards`` so that those packages never import each
other in a circle."""

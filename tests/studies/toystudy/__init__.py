"""A toy study that lives outside copyprobe: registering it is all it takes to validate its
config block, plan its targets and run its rule (tests/studies/test_toy_study.py)."""

"""The environments and their shared contract (:mod:`affectgym.envs.core`)."""

"""The Mdx motion platform: geometry, kinematics, shaping, protocol, simulated middleware and effector.

See ``docs/mdx.md``. The closed-chain model of a platform is built by
:mod:`shiftsim.formats.mdx`; actuator forces come from :mod:`shiftsim.mdx.statics`.
"""

"""The features around the loop, one capability a module (`engine.capability.Capability`):
each contributes its tools and system text, reacts at the loop's seams and reports its part of
the result. docs/capabilities.md says how to write one."""

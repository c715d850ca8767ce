"""The version of evalexport, in a leaf every part reads it from: the package, the tag an
export leaves on a remote run, a plan's install hint."""

__version__ = "0.5.0.dev0"

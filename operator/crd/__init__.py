"""CustomResourceDefinitions generated from the pydantic models (``cdcflow crds generate``)."""

"""tformer: the package behind the tformer textbook (filled in as modules land)."""

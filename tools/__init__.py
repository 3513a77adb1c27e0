"""Developer tools for the book (pairing check, notebook sync, Colab cells, HTML export)."""

"""Data readers: benchmark datasets in their original file formats, returned as numpy arrays."""

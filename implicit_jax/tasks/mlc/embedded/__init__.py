"""Small datasets shipped inside the package (``*.npz``), and the scripts that build them from the originals."""

"""The application on top of the library: the command line (``cli``), one module per
command (the functions the workflow's rules run), the workflow's plan (``plan``), the
stage code hashes (``stagehash``) and ``gpu-slot``. Nothing below imports this package."""

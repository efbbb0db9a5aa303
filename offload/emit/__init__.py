"""IR -> Python kernel source (``ast`` + ``ast.unparse``), shared by the CPU and GPU backends."""

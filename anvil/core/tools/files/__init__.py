"""The file tools (read_file, write_file), faithful text I/O, and keeping paths inside the project.
"""

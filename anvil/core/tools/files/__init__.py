"""The file tools (read_file, write_file), faithful text I/O, opening and replacing files without following
symbolic links, finding a file's other names (hard links), and cleaning up what a killed write left behind.
"""

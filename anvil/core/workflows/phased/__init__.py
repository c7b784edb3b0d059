"""Phased jobs: strategic phases plan, tactical phases do the work, in turn, each a fresh conversation; what lasts
is in the job directory's files. See :mod:`.workflow` (the seam), :mod:`.logic` (the rules), :mod:`.store` (the
files), :mod:`.texts` (the words) and :mod:`.tools` (todo_complete, todo_write, job_complete)."""

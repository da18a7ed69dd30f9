"""The only package that knows pytest: the session (composition root) and its parts,
collection of rubric files, ``assert_rubric``, xdist and the heap switches."""

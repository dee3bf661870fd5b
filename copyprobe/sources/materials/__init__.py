"""Copyright materials, the input of the compliance benchmark: the released benchmark's files
(:mod:`.dataset`), web pages from a URL list (:mod:`.web_pages`), the documentation of installed
Python distributions (:mod:`.package_docs`), and the copyright-line helpers they share
(:mod:`.rights`). Each kind fills the corpus's category and rights_* columns."""

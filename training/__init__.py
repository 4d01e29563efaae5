"""What makes the judge's shipped files: the reader (``reader_data``, ``fit_reader``,
``fit_reader_calibration``), the trees (``judge``, with the claim perturbations of
``perturb``, and ``fit_calibration``), the WordNet antonym lexicon (``antonyms``), and the
first cross-encoder experiment (``cross_encoder``, ``fit_cross_encoder``,
``quantise_cross_encoder``), whose model code the reader's training uses."""

"""What makes the judge's shipped files: the trained model (``judge``, with the claim
perturbations of ``perturb``), the WordNet antonym lexicon (``antonyms``), and the
cross-encoder experiment (``cross_encoder``, ``fit_cross_encoder``, ``quantise_cross_encoder``)."""

"""The PICO task kind (``--loader pico``): EBM-NLP's Participants, Interventions and Outcomes tagged word by
word in BLURB's IO form, scored by BLURB's macro token-level F1."""

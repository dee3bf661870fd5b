"""Licence recognition for the ``installed_licences`` source: families and their publication
dates (:mod:`.families`), opening/closing-phrase detectors (:mod:`.detectors`), text
normalisation and splitting (:mod:`.text`) and near-duplicate grouping (:mod:`.variants`)."""

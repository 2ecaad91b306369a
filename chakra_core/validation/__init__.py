"""Layer 3, validation: the structural rules of one rank and of a set, the communication
skeleton and the deadlock search. Imports base, io and trace. Private: public names through
:mod:`chakra_core`."""

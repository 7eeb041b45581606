Feature: A scenario line without its colon
  The scenario below is read as this description.

  Scenario the greeting is signed off
    Given the turn limit is 3

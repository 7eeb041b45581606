Feature: Nothing yet
  Scenarios come later.

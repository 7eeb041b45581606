Feature: Hello, scripts
  Both agents are real scripts: greet.py greets the input, and shout.sh
  shouts the greeting back in capitals.

  Background:
    Given the ensemble "ensemble.yaml"

  Scenario: The greeting is shouted back
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And the agents ran in this order: "greeter, shouter"
    And the output of agent "greeter" is:
      """
      {"greeting": "Hello, world!"}
      """
    And the output of agent "shouter" is "HELLO, WORLD!"
    And the input of agent "shouter" contains "Hello, world!"

  Scenario: Another input
    Given the input "ensemble"
    When the ensemble runs
    Then the output of agent "shouter" is "HELLO, ENSEMBLE!"

  Scenario: Quotes and backslashes come through whole
    Given the input:
      """
      {"region": "EMEA", "path": "C:\\data"}
      """
    When the ensemble runs
    Then the run has no errors
    And the output of agent "shouter" is:
      """
      HELLO, {"REGION": "EMEA", "PATH": "C:\\DATA"}!
      """

  Scenario: A failure envelope fails the execution with its message
    Given the input "   "
    When the ensemble runs
    Then agent "greeter" failed with an error containing "nobody to greet"
    And agent "shouter" did not run
    And the exit code is 1

  Scenario: A dependency without a greeting fails the shell script
    Given agent "greeter" responds:
      """
      {"note": "no greeting here"}
      """
    When the ensemble runs
    Then agent "shouter" failed with an error containing "the greeter sent no greeting"
    And the exit code is 1

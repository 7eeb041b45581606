Feature: Writer and reviewer
  The writer's drafts are injected; the brief, the reviewer and the publisher
  are real scripts. The reviewer sends drafts back until one mentions all the
  brief asks for, then the publisher runs once.

  Background:
    Given the ensemble "ensemble.yaml"

  Scenario: Three drafts until the reviewer approves, then publish
    Given the responses file "responses.yaml"
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And the agents ran in this order: "brief, writer, reviewer, writer, reviewer, writer, reviewer, publisher"
    And the turn count is 8
    And agent "writer" ran 3 times
    And agent "reviewer" ran 3 times
    And agent "publisher" ran 1 time
    And the conversation history is:
      | turn | agent     | execution | status | output                                             |
      | 1    | brief     | 1         | ok     | "must_mention":["release date","install","changelog"] |
      | 2    | writer    | 1         | ok     | Ensemble 1.0 is here                               |
      | 3    | reviewer  | 1         | ok     | "missing":["release date","install","changelog"]   |
      | 4    | writer    | 2         | ok     | release date of 1 December                         |
      | 5    | reviewer  | 2         | ok     | "missing":["changelog"]                            |
      | 6    | writer    | 3         | ok     | the changelog lists every change                   |
      | 7    | reviewer  | 3         | ok     | "approved":true                                    |
      | 8    | publisher | 1         | ok     | "review_rounds":3                                  |
    And the final state of "publisher" is:
      """
      {"published": true, "review_rounds": 3}
      """
    And the expression "context.reviewer.approved && context.reviewer.round == 3" is true

  Scenario: A first draft that has everything is published at once
    Given agent "writer" responds "Ensemble 1.0: release date 1 December; install with go install; see the changelog."
    When the ensemble runs
    Then the agents ran in this order: "brief, writer, reviewer, publisher"
    And the output of agent "reviewer" is:
      """
      {"approved": true, "missing": [], "too_long": false, "round": 1}
      """
    And the output of agent "publisher" contains "\"review_rounds\":1"

  Scenario: A writer who never gets it right stops at its max_turns
    Given agent "writer" responds "Draft one."
    And agent "writer" responds "Draft two."
    And agent "writer" responds "Draft three."
    And agent "writer" responds "Draft four."
    And agent "writer" responds "Draft five."
    When the ensemble runs
    Then the completion reason is "completed"
    And agent "writer" ran 5 times
    And agent "reviewer" ran 5 times
    And agent "publisher" did not run
    And the turn count is 11
    And the output of agent "reviewer" contains "\"approved\":false"

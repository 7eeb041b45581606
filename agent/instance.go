package agent

// Instance is what one instance of a fan-out agent is given besides the
// agent's request (docs/semantics.md#fan-out): its item of the list.
type Instance struct {
	// Name is the instance's name, `agent[index]`.
	Name string
	// Item is the item of the list, Index its 0-based position, Count the
	// list's length.
	Item  any
	Index int
	Count int
	// Seq is the 1-based number of this instance among every instance of
	// the agent in the run, failed ones included: the agent's injected
	// response it takes (docs/testing.md#the-responses-file).
	Seq int
}

// InstanceInput is the instance's part of a script's stdin object
// (docs/semantics.md#script-agents): absent for other executions.
type InstanceInput struct {
	Item  any `json:"item"`
	Index int `json:"index"`
	Count int `json:"count"`
}

// Stdin is the instance's part of a script's stdin object; nil (nothing)
// for an execution that is not an instance.
func (in *Instance) Stdin() *InstanceInput {
	if in == nil {
		return nil
	}
	return &InstanceInput{Item: in.Item, Index: in.Index, Count: in.Count}
}

// AddTo adds the instance's item, index and count to an execution's input
// data; nothing for an execution that is not an instance.
func (in *Instance) AddTo(m map[string]any) {
	if in == nil {
		return
	}
	m["item"], m["index"], m["count"] = in.Item, in.Index, in.Count
}

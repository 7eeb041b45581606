package cassette

// Check reads data as the recording file of the agent at path, as a
// replay would: an error when it is not one (another YAML file, another
// version). name is the file, for the error.
func Check(name string, data []byte) error {
	f := &file{path: name, Agent: name}
	return f.parse(data)
}

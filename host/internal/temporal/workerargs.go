package temporal

import "errors"

// CheckWorkerArgs checks what sextant worker needs before anything is
// dialled: the front end, the pipelines' folder and exactly one place
// results land (a server holding the store, or a store of its own).
func CheckWorkerArgs(hostPort, pipelines, storeURL, storeDir string) error {
	switch {
	case hostPort == "":
		return errors.New("--temporal: give the Temporal front end, HOST:PORT")
	case pipelines == "":
		return errors.New("--pipelines: give the folder of the pipelines to run")
	case (storeURL == "") == (storeDir == ""):
		return errors.New("give one of --store-url (a sextant serve holding the store) or --store (a store this worker holds)")
	}
	return nil
}

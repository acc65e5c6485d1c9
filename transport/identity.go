package transport

// Identity is what a device says it is: the four fields of an IEEE 488.2
// *IDN? reply, which every driver fills as well as its device allows.
type Identity struct {
	Vendor   string `json:"vendor"`
	Model    string `json:"model"`
	Serial   string `json:"serial"`
	Firmware string `json:"firmware"`
}

func (id Identity) String() string {
	return id.Vendor + " " + id.Model + " s/n " + id.Serial + " fw " + id.Firmware
}
